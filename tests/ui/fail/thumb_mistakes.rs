use chrono::{DateTime, Utc};
use crudforge::files::File;
use crudforge::Resource;
use uuid::Uuid;

#[derive(Resource)]
#[resource(table = albums)]
pub struct Album {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(file(max_size = "5 MiB", types = ["image/png"], thumbs = ["0x10"]))]
    //~^ ERROR each side is 1 to 4096 pixels
    pub cover: Option<File>,
    #[resource(file(max_size = "5 MiB", types = ["image/png"], thumbs = ["big"]))]
    //~^ ERROR is not a box
    pub back: Option<File>,
    #[resource(file(max_size = "5 MiB", types = ["image/png", "application/pdf"], thumbs = ["64x64"]))]
    //~^ ERROR `thumbs` needs images a thumbnail can be made from
    pub booklet: Option<File>,
}

fn main() {}
